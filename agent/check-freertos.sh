#!/bin/sh
# Compile check of the agent's FreeRTOS port (issue 67): every agent source
# with port_freertos.c and the board file, arm-none-eabi-gcc -Wall -Wextra
# -Werror, against the FreeRTOS headers you point it at. Builds nothing of
# FreeRTOS and links nothing.
#   FREERTOS_KERNEL  a FreeRTOS-Kernel checkout (include/, portable/GCC/ARM_CM3)
#   FREERTOS_POSIX   a Lab-Project-FreeRTOS-POSIX checkout
#   FREERTOS_CONFIG  the directory with your FreeRTOSConfig.h and
#                    FreeRTOS_POSIX_portable.h (docs/porting.md "FreeRTOS")
set -eu
cd "$(dirname "$0")"
for v in FREERTOS_KERNEL FREERTOS_POSIX FREERTOS_CONFIG; do
    eval "d=\${$v:-}"
    if [ -z "$d" ] || [ ! -d "$d" ]; then
        echo "check-freertos.sh: $v must name a directory (got '${d}')" >&2
        exit 2
    fi
done
CC=${CC:-arm-none-eabi-gcc}
CPU=${CPU:-cortex-m3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The file list and options come from sources.mk, as every build's do.
mk() { printf 'v:\n\t@echo $(%s)\n' "$1" | make -s --no-print-directory -f sources.mk -f - v RTSCOPE_TCP=0; }
srcs="$(mk RTSCOPE_SRC) $(mk RTSCOPE_PORT_SRC_freertos)"
defs="$(mk RTSCOPE_DEFS) $(mk RTSCOPE_DEFS_freertos)"
inc=$(mk RTSCOPE_INC_freertos)
for f in $srcs; do
    $CC -mcpu="$CPU" -mthumb -std=c99 -O2 -Wall -Wextra -Werror \
        $defs -I "$inc" \
        -isystem "$FREERTOS_CONFIG" -isystem "$FREERTOS_KERNEL/include" \
        -isystem "$FREERTOS_KERNEL/portable/GCC/ARM_CM3" \
        -isystem "$FREERTOS_POSIX/include" -isystem "$FREERTOS_POSIX/include/private" \
        -isystem "$FREERTOS_POSIX/FreeRTOS-Plus-POSIX/include" \
        -isystem "$FREERTOS_POSIX/FreeRTOS-Plus-POSIX/include/portable" \
        -c "$f" -o "$out/${f%.c}.o"
done
echo "check-freertos.sh: $(echo $srcs | wc -w) files compile warning-free ($CC, $CPU)"

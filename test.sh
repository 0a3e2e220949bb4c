#!/usr/bin/env bash
# rtscope's test command (README "Run the tests"; .ci/run calls exactly this).
# Installs the peers and tools the tests use when running as root with apt,
# then runs clippy and the whole test suite. As root with every package
# installed (as CI runs it) no test may skip: RTSCOPE_NO_SKIP=1 makes a skip a
# failure that says why. Otherwise (not root, no apt) tests whose tools or
# privileges are missing skip with a message, and the skips are counted at the end.
set -euo pipefail
cd "$(dirname "$0")"

# Debian packages the tests use: rt-tests / stress-ng / linux-perf (peers and
# load engine), qemu + busybox + cpio (kernel lab; qemu-system-arm and
# gcc-aarch64-linux-gnu for its arm64 guests: their Debian arm64 packages are
# fetched by lab/kernel-lab itself), chromium (HTML report),
# postgresql (the store tests start their own server from its binaries),
# prometheus (the monitor test starts one that scrapes rtscope monitor).
PACKAGES=(rt-tests stress-ng linux-perf qemu-system-x86 qemu-system-arm busybox-static cpio chromium postgresql prometheus clang gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf libc6-dev-arm64-cross libc6-dev-armhf-cross qemu-user-static)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "test.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # A dpkg run cut off earlier (a killed session, a rebooted CI machine)
    # blocks every apt-get install until it is finished.
    dpkg --configure -a
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "test.sh: not installing ${missing[*]} (needs root and apt-get); tests that need them will skip"
  fi
fi

# Skips: none allowed where nothing is missing (tests/common `skip!`).
skip_log=$(mktemp "${TMPDIR:-/tmp}/rtscope-skips.XXXXXX")
trap 'rm -f "$skip_log"' EXIT
export RTSCOPE_SKIP_LOG="$skip_log"
still_missing=0
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || still_missing=1
done
if [ "$(id -u)" = 0 ] && [ "$still_missing" = 0 ]; then
  export RTSCOPE_NO_SKIP=1
fi

# Lints first (the formatting rustfmt.toml sets; clippy::undocumented_unsafe_blocks
# is denied in Cargo.toml),
# but a lint failure must not hide a test failure: both run, either fails.
lint=0
cargo fmt --check || lint=$?
cargo clippy --release --all-targets --quiet -- -D warnings || lint=$?
# --no-fail-fast: every test binary runs even when an earlier one failed.
# The knob check (tests/leftovers.rs) is left out of that run and run alone
# after it, so it sees what the whole suite left: the first test of the suite
# records every knob into $RTSCOPE_KNOBS_BEFORE_SUITE (tests/common).
knob_check=every_knob_holds_its_value_from_before_the_suite
knob_dir=$(mktemp -d "${TMPDIR:-/tmp}/rtscope-knobs.XXXXXX")
trap 'rm -f "$skip_log"; rm -rf "$knob_dir"' EXIT
export RTSCOPE_KNOBS_BEFORE_SUITE="$knob_dir/before.json"
sep=("--")
for a in "$@"; do [ "$a" = "--" ] && sep=(); done
tests=0
cargo test --release --no-fail-fast "$@" "${sep[@]}" --skip "$knob_check" || tests=$?
# Filtered runs (./test.sh --test NAME) may make no record: then nothing to check.
if [ "$#" -eq 0 ] || [ -e "$RTSCOPE_KNOBS_BEFORE_SUITE" ]; then
  cargo test --release --test leftovers -- --exact "$knob_check" || tests=$?
fi
skips=$(wc -l < "$skip_log")
if [ "$skips" -gt 0 ]; then
  echo "test.sh: $skips test(s) skipped (not root, or a package missing):" >&2
  sed 's/^/  /' "$skip_log" >&2
fi
if [ "$lint" -ne 0 ]; then
  echo "test.sh: cargo fmt --check or cargo clippy failed (exit $lint): see their messages above (cargo fmt formats)" >&2
fi
[ "$tests" -eq 0 ] && [ "$lint" -eq 0 ]

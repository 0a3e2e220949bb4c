//! A run's `results` read entry by entry: while [`read_entries`] runs, the
//! `results` list of a [`Run`](super::Run) being deserialised on this
//! thread is not built; each entry goes to the caller's function as soon as
//! it is read, and `results` is left empty. An rtscope result of 200 MB
//! is then read holding one entry, not all of them beside the rest.
//!
//! The hook is a thread-local set for the duration of one call, so the
//! derived `Deserialize` of `Run` (and every error serde_json gives, with
//! its line and column) stays the one definition of the schema.

use std::cell::RefCell;

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use super::ProbeResult;

/// What each entry is given to: its index and the entry; an error stops
/// the read (serde_json adds the line and column).
pub(crate) type Each = Box<dyn FnMut(usize, ProbeResult) -> Result<(), String>>;

thread_local! {
    static EACH: RefCell<Option<Each>> = const { RefCell::new(None) };
}

/// Run `read` (which deserialises one `Run` on this thread) with every
/// entry of its `results` given to `each` instead of kept.
pub(crate) fn read_entries<T>(each: Each, read: impl FnOnce() -> T) -> T {
    EACH.with(|e| *e.borrow_mut() = Some(each));
    let out = read();
    EACH.with(|e| *e.borrow_mut() = None);
    out
}

/// `Run::results`: a list as usual, or streamed to [`read_entries`]'s function.
pub(crate) fn results<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ProbeResult>, D::Error> {
    let Some(each) = EACH.with(|e| e.borrow_mut().take()) else {
        return Vec::<ProbeResult>::deserialize(d);
    };
    let mut v = Streamed(each);
    let out = d.deserialize_seq(&mut v);
    EACH.with(|e| *e.borrow_mut() = Some(v.0));
    out
}

struct Streamed(Each);

impl<'de> Visitor<'de> for &mut Streamed {
    type Value = Vec<ProbeResult>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a sequence")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut i = 0;
        while let Some(r) = seq.next_element::<ProbeResult>()? {
            (self.0)(i, r).map_err(serde::de::Error::custom)?;
            i += 1;
        }
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::model::Run;

    #[test]
    fn entries_read_one_by_one_are_the_whole_runs_and_results_stay_empty() {
        let text = include_str!("../../tests/fixtures/golden/result-v1.json");
        let whole: Run = serde_json::from_str(text).unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = Arc::clone(&got);
        let run: Run = read_entries(
            Box::new(move |i, r| {
                g.lock().unwrap().push((i, r));
                Ok(())
            }),
            || serde_json::from_str(text).unwrap(),
        );
        assert!(run.results.is_empty());
        let got = std::mem::take(&mut *got.lock().unwrap());
        assert_eq!(got.len(), whole.results.len());
        for (k, (i, r)) in got.into_iter().enumerate() {
            assert_eq!(i, k);
            assert_eq!(serde_json::to_string(&r).unwrap(), serde_json::to_string(&whole.results[k]).unwrap());
        }
        let again: Run = serde_json::from_str(text).unwrap();
        assert_eq!(again.results.len(), whole.results.len(), "outside read_entries, results are kept");
        let err = read_entries(Box::new(|_, _| Err("stop here".into())), || serde_json::from_str::<Run>(text).unwrap_err());
        assert!(err.to_string().contains("stop here at line"), "{err}");
    }
}

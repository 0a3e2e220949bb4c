//! Pure functions over the result model. `warnings`: what in a result the
//! reader should know before trusting it, each with advice.

pub mod warnings;

//! pvsync: preadv/pwritev with one buffer, one I/O at a time.

super::blocking::plain_blocking_engine!(
    &["pvsync"],
    "preadv(2)/pwritev(2), one I/O at a time (iodepth is 1)",
    super::blocking::Call::Preadv
);

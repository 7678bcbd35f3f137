//! psync: pread/pwrite, one I/O at a time.

super::blocking::plain_blocking_engine!(
    &["psync"],
    "pread(2)/pwrite(2), one I/O at a time (iodepth is 1)",
    super::blocking::Call::Pread
);

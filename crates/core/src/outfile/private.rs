//! Private working folders: new, ours, and emptied of only what we made.
//!
//! A folder dioscope works in (`--profile`'s, a recipe's) is made with a
//! random name and mode 0700 (`mkdtemp`), never reused when it exists
//! already, and on removal loses only the files made in it through
//! [`PrivateDir`]: a user's file that appeared there is left alone.

//! Unit tests of the pool's arithmetic: how many watches a connection takes.

use super::*;

#[test]
fn watches_leave_a_tenth_of_the_limit_for_short_requests() {
    assert_eq!(capacity(100, Kind::Watch), 90);
    assert_eq!(capacity(100, Kind::Short), 100);
    assert_eq!(capacity(250, Kind::Watch), 225);
    assert_eq!(capacity(7, Kind::Watch), 6);
    assert_eq!(capacity(2, Kind::Watch), 1);
    assert_eq!(capacity(1, Kind::Watch), 1);
    assert_eq!(capacity(0, Kind::Watch), 0);
}

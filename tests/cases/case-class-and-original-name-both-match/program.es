in double T case { T >= 100.0 ? High : Low }
out double Any, double Hi, {} TwoLows

( T(t) { !>Any(t); }
| High(h) { !>Hi(h); }
| Low() Low() { !>TwoLows({}); }
)*

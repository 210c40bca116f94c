in double Temp case { Temp >= 100.0 ? High : Low }, {} Reset
out long Other, double Hot

( (.-Temp()) { !>Other(1); }
| High(h) { !>Hot(h); }
| Low()
)*

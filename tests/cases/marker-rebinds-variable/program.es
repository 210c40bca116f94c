in {long f;} P
out long Old, long New

P(v) { w = v; v.f = 10; }
( P(v) { !>Old(w.f); !>New(v.f); w = v; } )*

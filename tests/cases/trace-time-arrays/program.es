in time[] Ts, {string n; time[] at;} S
out time[] O, time F

( Ts(ts) { !>O(ts); } | S(s) { !>F(s.at[1]); } )*

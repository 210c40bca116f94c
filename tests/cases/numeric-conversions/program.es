in long N, double D
out double Half, double Quarter, long Div, long Whole

( N(n) { !>Half(n / 2.0); !>Quarter(double(n) / 4); !>Div(n / 2); }
| D(d) { !>Whole(long(d)); }
)*

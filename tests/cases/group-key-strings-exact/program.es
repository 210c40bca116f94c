in string S group(S)
out long N

{ n = 0; }
( S() { n = n + 1; !>N(n); } )*

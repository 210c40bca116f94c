in {boolean b; double d; time t;} E group(E.b, E.d, E.t)
out long Count

{ n = 0; }
( E() { n = n + 1; !>Count(n); } )*

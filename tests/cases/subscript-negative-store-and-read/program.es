in long I, long R
out long V

{ a = new long[2]; a[0] = 5; a[1] = 6; }
( I(i) { a[i] = 9; !>V(a[0] + a[1]); } | R(i) { !>V(a[i]); } )*

in long Num
out long V

{ d = 0; !>V(10 / d); }
( Num(n) { !>V(n / d); } )*

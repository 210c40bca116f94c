in {} A
out long X

{ !>X(1); }
( A() { !>X(2); } )*

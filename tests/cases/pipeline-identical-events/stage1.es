in long A
out long X

( A(a) { !>X(a); !>X(a); } )*

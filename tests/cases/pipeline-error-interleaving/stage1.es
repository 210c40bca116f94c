in long A
out long X

( A(a) { !>X(a); !>X(a / 0); !>X(a + 1); } )*

in boolean A, boolean B
out long X

( A(a) B(b) { a ? b ? !>X(1); : !>X(2); !>X(3); } )*

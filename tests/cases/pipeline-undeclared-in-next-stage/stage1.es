in long A
out long B, long Extra

( A(x) { !>Extra(x); !>B(x); } )*

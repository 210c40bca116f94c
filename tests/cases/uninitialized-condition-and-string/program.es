in {} A
out long X, string S

( A() { flag ? !>X(1); : !>X(2); !>S(name); } )*

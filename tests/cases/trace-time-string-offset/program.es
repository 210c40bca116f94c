in time T
out time U

( T(t) { !>U(t); } )*

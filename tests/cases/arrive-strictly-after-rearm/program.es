out time T

( arrive[.:.:00](t) { !>T(t); } )*

out time T

( arrive[9:30](t) { !>T(t); } )*

out time T

( arrive[10:.:30](t) { !>T(t); } )*

in {} Go
out time T

( Go() arrive[10:.:.](t) { !>T(t); } )*

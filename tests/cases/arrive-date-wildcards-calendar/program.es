out time T

( arrive[.-02-29 12:00](t) { !>T(t); } | arrive[2026-.-31 06:00](t) { !>T(t); } )*

out time At

( arrive[03:14:08](t) { !>At(t); } )*

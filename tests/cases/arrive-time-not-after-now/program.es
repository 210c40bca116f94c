in time Until
out time Fired

( Until(t) arrive[t](x) { !>Fired(x); } )*

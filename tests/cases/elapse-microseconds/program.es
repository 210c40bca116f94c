in {} Go
out time Fired

( Go() elapse[250 usec](t) { !>Fired(t); } )*

in long Go
out time Fired, long O

( Go(n) elapse[(10 / n) sec](t) { !>Fired(t); !>O(u + 1); } )*

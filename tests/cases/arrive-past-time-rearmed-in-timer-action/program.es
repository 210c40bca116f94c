out time Ring

{ d = secondsAfter(5, now()); }
( arrive[(d)](t) { !>Ring(t); d = secondsAfter(-1, d); } ){3}

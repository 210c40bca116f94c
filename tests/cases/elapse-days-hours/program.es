in {} Go
out time Fired

Go()
elapse[1 day](t) { !>Fired(t); }
elapse[3 hours](u) { !>Fired(u); }

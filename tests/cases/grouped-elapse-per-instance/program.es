in string Ping group(Ping)
out string Quiet

( Ping() | elapse[10 sec]() { !>Quiet(group[0]); } )*

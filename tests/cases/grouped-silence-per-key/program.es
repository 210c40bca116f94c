in string Ping group(Ping), string Pong group(Pong)
out string Silent

( . | elapse[10 sec]() { !>Silent(group[0]); } )*

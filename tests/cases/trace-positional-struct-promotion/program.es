in {string id; double price; long volume; time when;} Trade
out {string id; double price; long volume; time when;} Echo

( Trade(t) { !>Echo(t); } )*

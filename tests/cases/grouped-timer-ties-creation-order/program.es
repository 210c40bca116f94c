in string K group(K), long L group(string(L))
out string F

( K() | L() ) elapse[10 sec]() { !>F(group[0]); }

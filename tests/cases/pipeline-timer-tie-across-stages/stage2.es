in {} P
out string S

( P() { !>S("p"); } | elapse[10 sec]() { !>S("q"); } )*

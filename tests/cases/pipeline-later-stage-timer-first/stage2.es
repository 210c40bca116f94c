in {} Late
out string S

( Late() { !>S("late"); } | elapse[5 sec]() { !>S("quiet"); } )*

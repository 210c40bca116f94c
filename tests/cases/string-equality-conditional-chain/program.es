in string A
out string M

( A(a) { a == "available" ? !>M("on"); : a == "away" ? !>M("idle"); : !>M("off"); } )*

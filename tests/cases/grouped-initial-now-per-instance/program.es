in string A group(A)
out time Started

{ s = now(); }
A() elapse[5 sec]() { !>Started(s); }

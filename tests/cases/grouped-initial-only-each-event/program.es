in string A group(A)
out string Started

{ !>Started(group[0]); }

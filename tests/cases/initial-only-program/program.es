in {} A
out {} Started

{ !>Started({}); }

in time Set, {} Go
out {} Fired

( Set(deadline) | Go() arrive[deadline]() { !>Fired({}); } )*

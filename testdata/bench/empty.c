// The floor of a whole command: a static C program that does nothing.
// compare.sh times it beside `unwind --help` and `unwind pid`: what is
// left above it is start-up (for --help) and the work (for pid).
int main(void) { return 0; }

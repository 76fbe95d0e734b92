#include "probe/app.hpp"

int main(int argc, char** argv) { return precision_probe::main_entry(argc, argv); }

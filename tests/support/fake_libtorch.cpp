// Stands in for a LibTorch's libtorch_cpu.so and libtorch_cuda.so in the fake stacks of the CLI
// tests (tests/CMakeLists.txt): the probe's finder only sees that they are there (a real engine
// that loaded one would find none of the stable C ABI in it).

extern "C" int pp_fake_libtorch() { return 0; }

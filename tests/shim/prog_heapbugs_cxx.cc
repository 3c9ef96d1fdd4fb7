// prog_heapbugs_cxx: the C++ heap bugs of heapbugs.sh, one per mode (argv[1]), and a mode in
// which every form of operator new and delete is used correctly (no finding). Each line the
// test looks for carries a comment naming it (MODE: ROLE). Built with -g.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

static void *volatile sink;

// Hides a pointer from the compiler, so that a mismatched pair is neither warned about nor
// optimised away.
template <typename T> static T *hide(T *p)
{
    sink = p;
    return static_cast<T *>(sink);
}

__attribute__((noinline)) static void new_array_delete()
{
    char *p = new char[40]; // new[]-delete: allocated
    delete hide(p);         // new[]-delete: freed
}

__attribute__((noinline)) static void new_array_free()
{
    int *p = new int[6]; // new[]-free: allocated
    std::free(hide(p));  // new[]-free: freed
}

__attribute__((noinline)) static void malloc_delete()
{
    char *p = static_cast<char *>(std::malloc(24)); // malloc-delete: allocated
    delete hide(p);                                 // malloc-delete: freed
}

__attribute__((noinline)) static void new_delete_array()
{
    long *p = new long; // new-delete[]: allocated
    delete[] hide(p);   // new-delete[]: freed
}

__attribute__((noinline)) static void new_free()
{
    double *p = new double(1.5); // new-free: allocated
    std::free(hide(p));          // new-free: freed
}

__attribute__((noinline)) static void aligned_new_delete_array()
{
    struct alignas(64) line {
        char bytes[64];
    };
    line *p = new line; // aligned-new-delete[]: allocated
    delete[] hide(p);   // aligned-new-delete[]: freed
}

__attribute__((noinline)) static void delete_twice()
{
    int *p = new int(7); // delete-twice: allocated
    delete p;            // delete-twice: first freed
    delete hide(p);      // delete-twice: freed again
}

__attribute__((noinline)) static void new_array_overflow()
{
    unsigned char *p = new unsigned char[24]; // new[]-overflow: allocated
    hide(p)[25] = 1;
    delete[] p; // new[]-overflow: freed
}

// Every form, correctly paired: no finding, and std::bad_alloc still thrown and caught.
__attribute__((noinline)) static void correct()
{
    struct alignas(128) big {
        char bytes[128];
    };
    int *a = new int(1);
    int *b = new int[10];
    int *c = new (std::nothrow) int(2);
    int *d = new (std::nothrow) int[3];
    big *e = new big;
    big *f = new big[2];
    big *g = new (std::nothrow) big;
    big *h = new (std::nothrow) big[2];
    if (reinterpret_cast<unsigned long>(e) % 128 || reinterpret_cast<unsigned long>(f) % 128 ||
        reinterpret_cast<unsigned long>(g) % 128 || reinterpret_cast<unsigned long>(h) % 128)
        std::printf("misaligned\n");
    delete a;
    delete[] b;
    operator delete(c, std::nothrow);
    operator delete[](d, std::nothrow);
    delete e;
    delete[] f;
    operator delete(g, std::align_val_t(128));
    operator delete[](h, sizeof(big) * 2, std::align_val_t(128));
    void *s = operator new(40);
    operator delete(s, 40);
    std::string text(200, 'x');
    std::vector<std::string> words(100, text);
    std::printf("%zu\n", words.size() * words[99].size());
    // The new-handler: called once by the next operator new (it removes itself), which then
    // throws.
    std::set_new_handler([] {
        std::printf("new-handler called once\n");
        std::set_new_handler(nullptr);
    });
    try {
        std::vector<char> huge(hide(&text)->size() * (std::size_t(1) << 55));
        std::printf("no bad_alloc\n");
    } catch (const std::bad_alloc &) {
        std::printf("bad_alloc\n");
    }
    void *none = operator new(std::size_t(1) << 62, std::nothrow);
    std::printf("nothrow %s\n", none ? "block" : "null");
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)();
    } modes[] = {{"new[]-delete", new_array_delete},
                 {"new[]-free", new_array_free},
                 {"malloc-delete", malloc_delete},
                 {"new-delete[]", new_delete_array},
                 {"new-free", new_free},
                 {"aligned-new-delete[]", aligned_new_delete_array},
                 {"delete-twice", delete_twice},
                 {"new[]-overflow", new_array_overflow},
                 {"correct", correct}};
    for (const auto &m : modes)
        if (argc > 1 && std::strcmp(argv[1], m.name) == 0) {
            m.run();
            std::printf("%s done\n", argv[1]);
            return 0;
        }
    std::fprintf(stderr, "usage: prog_heapbugs_cxx MODE\n");
    return 2;
}

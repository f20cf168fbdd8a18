/* bin/kbctl: see cli/kbctl.h and `kbctl --help`. */
#include "cli/kbctl.h"

int main(int argc, char **argv)
{
    return kbctl_main(argc, argv);
}

/*
 * bcryptprimitives.dll for Wine 8.0 (Debian 12), which lacks it: Rust's standard library on
 * Windows (since Rust 1.78) takes its random bytes from ProcessPrng in this DLL, so without it
 * every Rust program fails to start under that Wine. This is Windows' own contract for
 * ProcessPrng, on Windows' own generator (RtlGenRandom); it is test scaffolding for running
 * our Windows builds here (scripts/cross builds it, examples/escape/tests/platforms.rs puts it
 * into the Wine prefix), never shipped. Newer Wine has the DLL and does not need it.
 */
#include <windows.h>
#define SystemFunction036 NTAPI SystemFunction036
#include <ntsecapi.h>
#undef SystemFunction036

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!RtlGenRandom(data, chunk)) {
            return FALSE;
        }
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}

//! The constants of the f64 functions, written by `scripts/cpumath-tables` (python3 + mpmath,
//! 200 bits, each rounded once to f64): regenerate them there, never by hand.

/// 32/ln2.
pub(crate) const INV_LN2_32: f64 = f64::from_bits(0x40471547652b82fe);
/// ln2/32 to 40 bits (times any |k| < 2^13 is exact) and the rest.
pub(crate) const LN2_32_HI: f64 = f64::from_bits(0x3f962e42fefa4000);
pub(crate) const LN2_32_LO: f64 = f64::from_bits(0xbcf8432a1b0e2634);
/// ln2 to 44 bits (times any |e| < 2^9 is exact) and the rest.
pub(crate) const LN2_HI: f64 = f64::from_bits(0x3fe62e42fefa3a00);
pub(crate) const LN2_LO: f64 = f64::from_bits(0xbce0ca86c3898d00);
/// 1/ln2.
pub(crate) const INV_LN2: f64 = f64::from_bits(0x3ff71547652b82fe);
/// 2/pi.
pub(crate) const FRAC_2_PI: f64 = f64::from_bits(0x3fe45f306dc9c883);
/// pi/2 in three parts, the first two rounded to 33 bits (times any |k| < 2^20 is exact).
pub(crate) const PI_2_1: f64 = f64::from_bits(0x3ff921fb54400000);
pub(crate) const PI_2_2: f64 = f64::from_bits(0x3dd0b4611a600000);
pub(crate) const PI_2_3: f64 = f64::from_bits(0x3ba3198a2e037073);
/// (ln2/32)^n / n!, n = 1..=4: exp2's polynomial in the fraction of 32x.
pub(crate) const EXP2_POLY: [f64; 4] = [
    f64::from_bits(0x3f962e42fefa39ef),
    f64::from_bits(0x3f2ebfbdff82c58f),
    f64::from_bits(0x3ebc6b08d704a0c0),
    f64::from_bits(0x3e43b2ab6fba4e77),
];

/// 2^(j/32), j = 0..32.
pub(crate) const EXP2_32: [f64; 32] = [
    f64::from_bits(0x3ff0000000000000),
    f64::from_bits(0x3ff059b0d3158574),
    f64::from_bits(0x3ff0b5586cf9890f),
    f64::from_bits(0x3ff11301d0125b51),
    f64::from_bits(0x3ff172b83c7d517b),
    f64::from_bits(0x3ff1d4873168b9aa),
    f64::from_bits(0x3ff2387a6e756238),
    f64::from_bits(0x3ff29e9df51fdee1),
    f64::from_bits(0x3ff306fe0a31b715),
    f64::from_bits(0x3ff371a7373aa9cb),
    f64::from_bits(0x3ff3dea64c123422),
    f64::from_bits(0x3ff44e086061892d),
    f64::from_bits(0x3ff4bfdad5362a27),
    f64::from_bits(0x3ff5342b569d4f82),
    f64::from_bits(0x3ff5ab07dd485429),
    f64::from_bits(0x3ff6247eb03a5585),
    f64::from_bits(0x3ff6a09e667f3bcd),
    f64::from_bits(0x3ff71f75e8ec5f74),
    f64::from_bits(0x3ff7a11473eb0187),
    f64::from_bits(0x3ff82589994cce13),
    f64::from_bits(0x3ff8ace5422aa0db),
    f64::from_bits(0x3ff93737b0cdc5e5),
    f64::from_bits(0x3ff9c49182a3f090),
    f64::from_bits(0x3ffa5503b23e255d),
    f64::from_bits(0x3ffae89f995ad3ad),
    f64::from_bits(0x3ffb7f76f2fb5e47),
    f64::from_bits(0x3ffc199bdd85529c),
    f64::from_bits(0x3ffcb720dcef9069),
    f64::from_bits(0x3ffd5818dcfba487),
    f64::from_bits(0x3ffdfc97337b9b5f),
    f64::from_bits(0x3ffea4afa2a490da),
    f64::from_bits(0x3fff50765b6e4540),
];

/// The first bucket of [`LOG`]: bucket i holds m in [(i - 1/2)/128, (i + 1/2)/128).
pub(crate) const LOG_FIRST: usize = 91;

/// For each bucket i of m in [sqrt(1/2), sqrt(2)) (from 91 to 181): c, 128/i to 28 bits (so
/// m * c is exact in f64, and c is 1 where i is 128), then -ln(c) and -log2(c).
pub(crate) const LOG: [(f64, f64, f64); 91] = [
    (f64::from_bits(0x3ff6816816000000), f64::from_bits(0xbfd5d5bddde95f30), f64::from_bits(0xbfdf804ae6bde397)),
    (f64::from_bits(0x3ff642c85a000000), f64::from_bits(0xbfd522ae09f8a3d8), f64::from_bits(0xbfde7df6024b32f9)),
    (f64::from_bits(0x3ff6058160000000), f64::from_bits(0xbfd4718dc171c41b), f64::from_bits(0xbfdd7e6c094ae102)),
    (f64::from_bits(0x3ff5c9882c000000), f64::from_bits(0xbfd3c25278733184), f64::from_bits(0xbfdc819dc4a20978)),
    (f64::from_bits(0x3ff58ed230000000), f64::from_bits(0xbfd314f1e0535ce4), f64::from_bits(0xbfdb877c5587b1be)),
    (f64::from_bits(0x3ff5555556000000), f64::from_bits(0xbfd269621334db92), f64::from_bits(0xbfda8ff97463b34b)),
    (f64::from_bits(0x3ff51d07ea000000), f64::from_bits(0xbfd1bf9960aa6b95), f64::from_bits(0xbfd99b0726b633b4)),
    (f64::from_bits(0x3ff4e5e0a8000000), f64::from_bits(0xbfd1178e84a7e47c), f64::from_bits(0xbfd8a8980e5b105a)),
    (f64::from_bits(0x3ff4afd6a0000000), f64::from_bits(0xbfd071385f4d5862), f64::from_bits(0xbfd7b89f015dd637)),
    (f64::from_bits(0x3ff47ae148000000), f64::from_bits(0xbfcf991c6eb3b379), f64::from_bits(0xbfd6cb0f69d71d60)),
    (f64::from_bits(0x3ff446f866000000), f64::from_bits(0xbfce530f03c71012), f64::from_bits(0xbfd5dfdcf4ba41b3)),
    (f64::from_bits(0x3ff4141414000000), f64::from_bits(0xbfcd1037f1e55e7b), f64::from_bits(0xbfd4f6fbb272707b)),
    (f64::from_bits(0x3ff3e22cbc000000), f64::from_bits(0xbfcbd087327bd8ad), f64::from_bits(0xbfd41060139e19ce)),
    (f64::from_bits(0x3ff3b13b14000000), f64::from_bits(0xbfca93ed3e8ad9e3), f64::from_bits(0xbfd32bfee4e242df)),
    (f64::from_bits(0x3ff3813814000000), f64::from_bits(0xbfc95a5ae037017f), f64::from_bits(0xbfd249cd2d6bf6ad)),
    (f64::from_bits(0x3ff3521cfc000000), f64::from_bits(0xbfc823c16ad1a3c2), f64::from_bits(0xbfd169c0575b999e)),
    (f64::from_bits(0x3ff323e34a000000), f64::from_bits(0xbfc6f0128a556abc), f64::from_bits(0xbfd08bce0cc63ab5)),
    (f64::from_bits(0x3ff2f684be000000), f64::from_bits(0xbfc5bf406dd43db2), f64::from_bits(0xbfcf5fd8aca1915c)),
    (f64::from_bits(0x3ff2c9fb4e000000), f64::from_bits(0xbfc4913d8693b561), f64::from_bits(0xbfcdac22d8c2bee2)),
    (f64::from_bits(0x3ff29e412a000000), f64::from_bits(0xbfc365fcb0d59016), f64::from_bits(0xbfcbfc67a914f425)),
    (f64::from_bits(0x3ff27350b8000000), f64::from_bits(0xbfc23d7126c9c202), f64::from_bits(0xbfca5094b040808a)),
    (f64::from_bits(0x3ff2492492000000), f64::from_bits(0xbfc1178e8027e47c), f64::from_bits(0xbfc8a89807dd1446)),
    (f64::from_bits(0x3ff21fb782000000), f64::from_bits(0xbfbfe891461bd565), f64::from_bits(0xbfc704603a9dc4d9)),
    (f64::from_bits(0x3ff1f7047e000000), f64::from_bits(0xbfbda727670446a2), f64::from_bits(0xbfc563dc2c860081)),
    (f64::from_bits(0x3ff1cf06ae000000), f64::from_bits(0xbfbb6ac892ed5b1c), f64::from_bits(0xbfc3c6fb68d65c07)),
    (f64::from_bits(0x3ff1a7b962000000), f64::from_bits(0xbfb9335e6a594988), f64::from_bits(0xbfc22dadcc0bd998)),
    (f64::from_bits(0x3ff1811812000000), f64::from_bits(0xbfb700d3122ac0e1), f64::from_bits(0xbfc097e39220d876)),
    (f64::from_bits(0x3ff15b1e60000000), f64::from_bits(0xbfb4d31165207eac), f64::from_bits(0xbfbe0b1af47da109)),
    (f64::from_bits(0x3ff135c812000000), f64::from_bits(0xbfb2aa04b00717a4), f64::from_bits(0xbfbaed392baa07bc)),
    (f64::from_bits(0x3ff1111112000000), f64::from_bits(0xbfb08598c39e3a06), f64::from_bits(0xbfb7d604ab0259c4)),
    (f64::from_bits(0x3ff0ecf56c000000), f64::from_bits(0xbfaccb73d0ddb2cc), f64::from_bits(0xbfb4c5610092ae3a)),
    (f64::from_bits(0x3ff0c97150000000), f64::from_bits(0xbfa894aa1c9fb343), f64::from_bits(0xbfb1bb32abc5a676)),
    (f64::from_bits(0x3ff0a6810a000000), f64::from_bits(0xbfa466aec7ade3e9), f64::from_bits(0xbfad6ebd0d174c37)),
    (f64::from_bits(0x3ff0842108000000), f64::from_bits(0xbfa0415d81e74444), f64::from_bits(0xbfa77394be4eb523)),
    (f64::from_bits(0x3ff0624dd2000000), f64::from_bits(0xbf984924edc8cabd), f64::from_bits(0xbfa184b8ba362f54)),
    (f64::from_bits(0x3ff0410410000000), f64::from_bits(0xbf90205648935847), f64::from_bits(0xbf9743ee6f09edf1)),
    (f64::from_bits(0x3ff0204082000000), f64::from_bits(0xbf801015f388de6d), f64::from_bits(0xbf872c7c57d7055e)),
    (f64::from_bits(0x3ff0000000000000), f64::from_bits(0x0000000000000000), f64::from_bits(0x0000000000000000)),
    (f64::from_bits(0x3fefc07f02000000), f64::from_bits(0x3f7fe02a69106789), f64::from_bits(0x3f86fe50b57db3db)),
    (f64::from_bits(0x3fef81f820000000), f64::from_bits(0x3f8fc0a890fc03e4), f64::from_bits(0x3f96e7966ead8ac5)),
    (f64::from_bits(0x3fef44659e000000), f64::from_bits(0x3f97b91b1155b11b), f64::from_bits(0x3fa11cd1dbed8545)),
    (f64::from_bits(0x3fef07c1f0000000), f64::from_bits(0x3f9f829b1e783300), f64::from_bits(0x3fa6bad38119a13a)),
    (f64::from_bits(0x3feecc07b4000000), f64::from_bits(0x3fa39e87a97ebd60), f64::from_bits(0x3fac4dfaa13cb9bf)),
    (f64::from_bits(0x3fee9131ac000000), f64::from_bits(0x3fa77458f532dcfc), f64::from_bits(0x3fb0eb389ee9f560)),
    (f64::from_bits(0x3fee573aca000000), f64::from_bits(0x3fab42dd605971bf), f64::from_bits(0x3fb3aa2fd112ce64)),
    (f64::from_bits(0x3fee1e1e1e000000), f64::from_bits(0x3faf0a30c21162a6), f64::from_bits(0x3fb663f6fc3a678d)),
    (f64::from_bits(0x3fede5d6e4000000), f64::from_bits(0x3fb16536ee637ae1), f64::from_bits(0x3fb918a16de9de3d)),
    (f64::from_bits(0x3fedae6076000000), f64::from_bits(0x3fb341d79c5bd1d1), f64::from_bits(0x3fbbc84249b1fb9e)),
    (f64::from_bits(0x3fed77b654000000), f64::from_bits(0x3fb51b074546183f), f64::from_bits(0x3fbe72ec1a83f596)),
    (f64::from_bits(0x3fed41d41e000000), f64::from_bits(0x3fb6f0d284656b4c), f64::from_bits(0x3fc08c58882a2763)),
    (f64::from_bits(0x3fed0cb590000000), f64::from_bits(0x3fb8c345d1319b21), f64::from_bits(0x3fc1dcd193b9d854)),
    (f64::from_bits(0x3fecd8568a000000), f64::from_bits(0x3fba926d318ad564), f64::from_bits(0x3fc32ae9dc28dc95)),
    (f64::from_bits(0x3feca4b306000000), f64::from_bits(0x3fbc5e5489bbc743), f64::from_bits(0x3fc476a9f57539c0)),
    (f64::from_bits(0x3fec71c71c000000), f64::from_bits(0x3fbe2707722af2e6), f64::from_bits(0x3fc5c01a3cde7f74)),
    (f64::from_bits(0x3fec3f8f02000000), f64::from_bits(0x3fbfec912fbbeabb), f64::from_bits(0x3fc70742d36698c1)),
    (f64::from_bits(0x3fec0e0704000000), f64::from_bits(0x3fc0d77e7a908e59), f64::from_bits(0x3fc84c2bccf005a9)),
    (f64::from_bits(0x3febdd2b8a000000), f64::from_bits(0x3fc1b72ad33f67a0), f64::from_bits(0x3fc98edd04b2dd3a)),
    (f64::from_bits(0x3febacf914000000), f64::from_bits(0x3fc29552fb9ff523), f64::from_bits(0x3fcacf5e32c19432)),
    (f64::from_bits(0x3feb7d6c3e000000), f64::from_bits(0x3fc371fc1f6e8f74), f64::from_bits(0x3fcc0db6ccdb63dd)),
    (f64::from_bits(0x3feb4e81b4000000), f64::from_bits(0x3fc44d2b710b7d1e), f64::from_bits(0x3fcd49ee52540067)),
    (f64::from_bits(0x3feb203640000000), f64::from_bits(0x3fc526e5e5a1b438), f64::from_bits(0x3fce840bea311339)),
    (f64::from_bits(0x3feaf286bc000000), f64::from_bits(0x3fc5ff3073a793d4), f64::from_bits(0x3fcfbc16bd56656d)),
    (f64::from_bits(0x3feac5701a000000), f64::from_bits(0x3fc6d60feac9d21d), f64::from_bits(0x3fd0790ade5923c4)),
    (f64::from_bits(0x3fea98ef60000000), f64::from_bits(0x3fc7ab890410d909), f64::from_bits(0x3fd11307dc445fec)),
    (f64::from_bits(0x3fea6d01a6000000), f64::from_bits(0x3fc87fa06910c911), f64::from_bits(0x3fd1ac05b5690eb9)),
    (f64::from_bits(0x3fea41a41a000000), f64::from_bits(0x3fc9525a9e3456b4), f64::from_bits(0x3fd24407abf4dc03)),
    (f64::from_bits(0x3fea16d3fa000000), f64::from_bits(0x3fca23bc1d52b563), f64::from_bits(0x3fd2db10fa746678)),
    (f64::from_bits(0x3fe9ec8e96000000), f64::from_bits(0x3fcaf3c949e0bff3), f64::from_bits(0x3fd37124cb4eba9b)),
    (f64::from_bits(0x3fe9c2d14e000000), f64::from_bits(0x3fcbc286789d8cd6), f64::from_bits(0x3fd406463e4e77b0)),
    (f64::from_bits(0x3fe999999a000000), f64::from_bits(0x3fcc8ff7c59a9a22), f64::from_bits(0x3fd49a784a5bc715)),
    (f64::from_bits(0x3fe970e4f8000000), f64::from_bits(0x3fcd5c216b8fbb91), f64::from_bits(0x3fd52dbdfc7ac142)),
    (f64::from_bits(0x3fe948b0fc000000), f64::from_bits(0x3fce2707726af2e6), f64::from_bits(0x3fd5c01a3d0caa03)),
    (f64::from_bits(0x3fe920fb4a000000), f64::from_bits(0x3fcef0adcaec5936), f64::from_bits(0x3fd6518fe3ba5c0f)),
    (f64::from_bits(0x3fe8f9c190000000), f64::from_bits(0x3fcfb9186b5e3e2b), f64::from_bits(0x3fd6e221cc2bb868)),
    (f64::from_bits(0x3fe8d3018e000000), f64::from_bits(0x3fd04025929cd041), f64::from_bits(0x3fd771d2b779b264)),
    (f64::from_bits(0x3fe8acb910000000), f64::from_bits(0x3fd0a324e0f390e3), f64::from_bits(0x3fd800a560ec1da3)),
    (f64::from_bits(0x3fe886e5f0000000), f64::from_bits(0x3fd1058bfb6e4ad5), f64::from_bits(0x3fd88e9c756705f5)),
    (f64::from_bits(0x3fe8618618000000), f64::from_bits(0x3fd1675cacaba60e), f64::from_bits(0x3fd91bba8a906b7f)),
    (f64::from_bits(0x3fe83c977a000000), f64::from_bits(0x3fd1c898c34199fb), f64::from_bits(0x3fd9a8023bc716e9)),
    (f64::from_bits(0x3fe8181818000000), f64::from_bits(0x3fd22941fc0f7966), f64::from_bits(0x3fda33760adbb56e)),
    (f64::from_bits(0x3fe7f405fe000000), f64::from_bits(0x3fd2895a113686a3), f64::from_bits(0x3fdabe1875aa16ef)),
    (f64::from_bits(0x3fe7d05f42000000), f64::from_bits(0x3fd2e8e2b9811d31), f64::from_bits(0x3fdb47ebf53cae7e)),
    (f64::from_bits(0x3fe7ad2208000000), f64::from_bits(0x3fd347dd9cf87d55), f64::from_bits(0x3fdbd0f2ed54b8ca)),
    (f64::from_bits(0x3fe78a4c82000000), f64::from_bits(0x3fd3a64c53f945ea), f64::from_bits(0x3fdc592fab1671ec)),
    (f64::from_bits(0x3fe767dce4000000), f64::from_bits(0x3fd404308716a7e4), f64::from_bits(0x3fdce0a4930a17ff)),
    (f64::from_bits(0x3fe745d174000000), f64::from_bits(0x3fd4618bc31c5ec2), f64::from_bits(0x3fdd6753e1a43e85)),
    (f64::from_bits(0x3fe7242880000000), f64::from_bits(0x3fd4be5f937778a1), f64::from_bits(0x3fdded3fd15f8d60)),
    (f64::from_bits(0x3fe702e05c000000), f64::from_bits(0x3fd51aad874df82d), f64::from_bits(0x3fde726aa2157f61)),
    (f64::from_bits(0x3fe6e1f76c000000), f64::from_bits(0x3fd5767715355a6c), f64::from_bits(0x3fdef6d6702f23ec)),
    (f64::from_bits(0x3fe6c16c16000000), f64::from_bits(0x3fd5d1bdc17809ca), f64::from_bits(0x3fdf7a856bdbda4a)),
    (f64::from_bits(0x3fe6a13cd2000000), f64::from_bits(0x3fd62c82f0d1c795), f64::from_bits(0x3fdffd7997c3f699)),
];

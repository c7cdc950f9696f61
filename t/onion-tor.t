#!/usr/bin/perl

# onion-tor.t -- real tor accepts the HiddenServiceDir that `sk onion`
# writes, in both modes (a separate onion key; the SK itself), and writes
# the same hostname; a mismatched key pair is refused.  tor runs with
# DisableNetwork 1 and SocksPort 0: nothing leaves the host.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;

use SKTest;

my $TOR = has_cmd('tor');
plan skip_all => 'tor is not installed' unless $TOR;

ok(-x $SKTest::SK, "sk binary $SKTest::SK")
    or BAIL_OUT('no sk binary: run make first');

my $dir = tmpdir();
# tor drops to debian-tor below and must reach the dirs inside.
chmod 0755, $dir or die "chmod $dir: $!";

# tor wants each HiddenServiceDir 0700 and owned by the user it runs as.
# As root, run it as debian-tor (tor's own package user) and let
# `sk --user` hand the dirs over; otherwise run it as ourselves.
my ($tor_user, $tor_uid, $tor_gid) = (undef, $>, $) + 0);
if ($> == 0) {
    my @pw = getpwnam('debian-tor');
    ($tor_user, $tor_uid, $tor_gid) = ('debian-tor', @pw[2, 3]) if @pw;
}
my @user = $tor_user ? ('--user', $tor_user) : ();
diag('tor runs as ' . ($tor_user // 'the test user'));

# ---------------------------------------------------------------------
# An independent address: the raw key from openssl, SHA3 from openssl
# dgst, base32 here.

sub base32 {
    my $bits = unpack('B*', shift);
    my @a = ('a' .. 'z', '2' .. '7');
    return join '', map { $a[oct "0b$_"] } $bits =~ /(.{5})/g;
}

sub onion_of_key {
    my ($keyfile) = @_;
    my $r = run_cmd(['openssl', 'pkey', '-in', $keyfile, '-pubout',
        '-outform', 'DER']);
    die "openssl pkey: $r->{err}" if $r->{rc};
    my $pub = substr($r->{out}, -32);
    spew("$dir/sum.in", ".onion checksum$pub\x03");
    $r = run_cmd(['openssl', 'dgst', '-sha3-256', '-binary',
        "$dir/sum.in"]);
    die "openssl dgst: $r->{err}" if $r->{rc};
    return base32($pub . substr($r->{out}, 0, 2) . "\x03") . '.onion';
}

sub mode_of { return sprintf '%04o', (stat shift)[2] & 07777 }

sub check_dir {
    my ($hs, $addr, $what) = @_;
    is(mode_of($hs), '0700', "$what: dir is 0700");
    for my $f (qw(hs_ed25519_secret_key hs_ed25519_public_key hostname)) {
        my @st = stat "$hs/$f";
        is(mode_of("$hs/$f"), '0600', "$what: $f is 0600");
        is("$st[4]:$st[5]", "$tor_uid:$tor_gid", "$what: $f owner");
    }
    is((stat $hs)[4], $tor_uid, "$what: dir owner");
    is(slurp("$hs/hostname"), "$addr\n", "$what: hostname");
    is(length slurp("$hs/hs_ed25519_secret_key"), 96,
        "$what: secret key file size");
    like(slurp("$hs/hs_ed25519_secret_key"),
        qr/^== ed25519v1-secret: type0 ==\0\0\0/, "$what: secret header");
}

# ---------------------------------------------------------------------
# Mode A: a separate onion key (--new), saved for backup with -K.

my $port_a = free_port();
my $r = sk('onion', '--new', '-K', "$dir/onion.key",
    '-P', "80:127.0.0.1:$port_a", '-P', '443', '-o', "$dir/hs-sep",
    '--torrc', "$dir/sep.torrc", @user, '--json');
is($r->{rc}, 0, 'sk onion --new') or diag($r->{err});
my $j = eval { decode_json($r->{out}) } // {};
my $addr_a = $j->{address} // '';
like($addr_a, qr/^[a-z2-7]{55}d\.onion$/, 'separate: address');
is($j->{mode}, 'separate', 'separate: mode');
is($j->{dir}, "$dir/hs-sep", 'separate: dir');
is($j->{torrc}, "$dir/sep.torrc", 'separate: torrc');
is($j->{services}, "https;$addr_a", 'separate: suggested Services');
is(onion_of_key("$dir/onion.key"), $addr_a,
    'separate: address recomputed from the -K key');
is(mode_of("$dir/onion.key"), '0600', 'separate: -K key is 0600');
check_dir("$dir/hs-sep", $addr_a, 'separate');
is(slurp("$dir/sep.torrc"),
    "HiddenServiceDir $dir/hs-sep\n"
    . "HiddenServicePort 80 127.0.0.1:$port_a\n"
    . "HiddenServicePort 443 127.0.0.1:443\n", 'separate: torrc snippet');

# Text output: the address alone on stdout, the Services hint on stderr.
$r = sk('onion', '--new', '-P', '8443', '-o', "$dir/hs-text", @user);
is($r->{rc}, 0, 'sk onion --new, text');
like($r->{out}, qr/^[a-z2-7]{56}\.onion\n\z/, 'text: one line');
like($r->{err}, qr/alternate route in the SK's Services field/,
    'text: Services hint on stderr');
ok(-f "$dir/hs-text.torrc", 'text: default torrc is HSDIR.torrc');

# ---------------------------------------------------------------------
# Mode B: the SK itself.

$r = sk('keygen', '-n', 'example.org', '-o', "$dir/sk.key",
    map { ('-b', "$dir/backup$_.key") } 1 .. 3);
is($r->{rc}, 0, 'sk keygen') or diag($r->{err});

my $port_b = free_port();
$r = sk('onion', '-k', "$dir/sk.key", '-P', "443:127.0.0.1:$port_b",
    '-o', "$dir/hs-sk", '--torrc', "$dir/sk.torrc", @user);
is($r->{rc}, 0, 'sk onion -k') or diag($r->{err});
my $addr_b = $r->{out};
chomp $addr_b;
is($addr_b, onion_of_key("$dir/sk.key"), 'sk: address is the SK\'s');
is($r->{err}, '', 'sk: nothing on stderr');
check_dir("$dir/hs-sk", $addr_b, 'sk');

$r = sk('onion', '-k', "$dir/sk.key", '-P', '443', '-o', "$dir/hs-sk",
    '--torrc', "$dir/other.torrc");
is($r->{rc}, 1, 'sk onion refuses to overwrite');
like($r->{err}, qr{^sk: \Q$dir\E/hs-sk/hs_ed25519_secret_key: already exists},
    'overwrite: names the file');
ok(!-e "$dir/other.torrc", 'overwrite: no torrc written');

$r = sk('keygen', '-n', 'example.org', '-t', 'p256', '-o', "$dir/p256.key",
    map { ('-b', "$dir/p256-backup$_.key") } 1 .. 3);
is($r->{rc}, 0, 'sk keygen -t p256') or diag($r->{err});
$r = sk('onion', '-k', "$dir/p256.key", '-P', '443', '-o', "$dir/hs-p256");
is($r->{rc}, 1, 'a P-256 SK cannot be the onion key');
like($r->{err}, qr/only an Ed25519 SK can be the onion key/,
    'P-256: says why');
ok(!-e "$dir/hs-p256", 'P-256: no dir');

# ---------------------------------------------------------------------
# Real tor.  sk wrote hostname; remove it, since only a running tor
# writes it again, and compare.  In the SK's dir remove the public key
# too: tor then derives it from the secret key file and writes its own,
# which must be byte for byte what sk wrote.

sub tor_config {
    my ($name, @includes) = @_;
    my $data = "$dir/$name-data";
    mkdir $data, 0700 or die "mkdir $data: $!";
    chown $tor_uid, $tor_gid, $data or die "chown $data: $!";
    # tor opens its log after dropping to its user.
    spew("$dir/$name.log", '', 0644);
    chown $tor_uid, $tor_gid, "$dir/$name.log" or die "chown: $!";
    my $torrc = "$dir/$name.torrc-main";
    spew($torrc, join '',
        "DisableNetwork 1\n",
        "SocksPort 0\n",
        "DataDirectory $data\n",
        "Log notice file $dir/$name.log\n",
        ($tor_user ? "User $tor_user\n" : ''),
        map { "%include $_\n" } @includes);
    return $torrc;
}

sub warnings_of {
    my ($log) = @_;
    return grep { /\[(warn|err)\]/ } split /\n/, (-e $log ? slurp($log) : '');
}

my $torrc = tor_config('tor', "$dir/sep.torrc", "$dir/sk.torrc");
$r = run_cmd([$TOR, '-f', $torrc, '--verify-config']);
is($r->{rc}, 0, 'tor --verify-config') or diag($r->{out});

my $pub_a = slurp("$dir/hs-sep/hs_ed25519_public_key");
my $pub_b = slurp("$dir/hs-sk/hs_ed25519_public_key");
unlink "$dir/hs-sep/hostname", "$dir/hs-sk/hostname",
    "$dir/hs-sk/hs_ed25519_public_key";

my $pid = run_daemon([$TOR, '-f', $torrc, '--RunAsDaemon', '0'],
    "$dir/tor.out");
my $up = wait_for_file("$dir/hs-sep/hostname", 20)
    && wait_for_file("$dir/hs-sk/hostname", 20);
ok($up, 'tor wrote both hostnames');
ok(daemon_alive($pid), 'tor is still running');
stop_daemon($pid);

is(-e "$dir/hs-sep/hostname" ? slurp("$dir/hs-sep/hostname") : '',
    "$addr_a\n", 'separate: tor\'s hostname is sk\'s address');
is(-e "$dir/hs-sk/hostname" ? slurp("$dir/hs-sk/hostname") : '',
    "$addr_b\n", 'sk: tor\'s hostname is sk\'s address');
is(slurp("$dir/hs-sep/hs_ed25519_public_key"), $pub_a,
    'separate: tor kept the public key file');
is(-e "$dir/hs-sk/hs_ed25519_public_key"
    ? slurp("$dir/hs-sk/hs_ed25519_public_key") : '', $pub_b,
    'sk: tor\'s public key file from the secret key is sk\'s');
# With User, tor's first (root) pass regenerates the public key we removed
# as a root-owned file, then, as debian-tor, cannot open it and writes it
# again: tor's own quirk with a missing file, checked byte-exact above.
my $quirk = qr{Could not open "\Q$dir\E/hs-sk/hs_ed25519_public_key": Permission denied};
my @complaints = grep { /key|onion|hidden|service|permission|director/i }
    grep { !($tor_user && /$quirk/) } warnings_of("$dir/tor.log");
is_deeply(\@complaints, [], 'tor does not complain about the keys')
    or diag(slurp("$dir/tor.log"));

# ---------------------------------------------------------------------
# A mismatched pair: the separate dir's secret key with the SK's public
# key.  --verify-config does not read the keys and passes; a running tor
# refuses the pair, writes no hostname and exits.

my $bad = "$dir/hs-bad";
$r = sk('onion', '--new', '-P', '80', '-o', $bad, '--torrc',
    "$dir/bad.torrc", @user);
is($r->{rc}, 0, 'sk onion for the tampered dir');
spew("$bad/hs_ed25519_public_key", $pub_b, 0600);
chown $tor_uid, $tor_gid, "$bad/hs_ed25519_public_key";
unlink "$bad/hostname";

$torrc = tor_config('bad', "$dir/bad.torrc");
$r = run_cmd([$TOR, '-f', $torrc, '--verify-config']);
is($r->{rc}, 0, 'tampered: tor --verify-config still passes');

$pid = run_daemon([$TOR, '-f', $torrc, '--RunAsDaemon', '0'],
    "$dir/bad.out");
my $exited = wait_until(sub { !daemon_alive($pid) }, 20);
my $status = stop_daemon($pid);
ok($exited, 'tampered: tor exits');
ok(defined $status && $status != 0, 'tampered: with a failure status');
ok(!-e "$bad/hostname", 'tampered: tor wrote no hostname');
like(join("\n", warnings_of("$dir/bad.log")),
    qr/\Q$bad\E\/hs_ed25519_public_key does not match \Q$bad\E\/hs_ed25519_secret_key/,
    'tampered: tor says the pair does not match');
is(slurp("$bad/hs_ed25519_public_key"), $pub_b,
    'tampered: tor did not "repair" the public key');

done_testing();

#!/usr/bin/perl
# sk-milter writes the onion service for the mail ports (OnionDir,
# OnionTorrc) from the SK itself; real tor accepts it and writes the same
# hostname; a restart keeps the keys.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;
my $TOR = has_cmd('tor');
plan(skip_all => 'no tor') unless $TOR;

my $dir = tmpdir();
chmod 0755, $dir;
my ($tor_user, $tor_uid, $tor_gid) = (undef, $>, $) + 0);
if ($> == 0 && (my @pw = getpwnam('debian-tor'))) {
    ($tor_user, $tor_uid, $tor_gid) = ('debian-tor', @pw[2, 3]);
}

my $r = sk('keygen', '-n', 'mx.example.org', '-o', "$dir/sk.key",
    '--no-backups-i-accept-the-risk');
is($r->{rc}, 0, 'sk keygen');

my $mport = free_port();
my $hs = "$dir/hs";
my $log = "$dir/milter.log";
spew("$dir/sk-milter.conf", join('', map { "$_\n" }
    "Socket inet:$mport\@127.0.0.1", 'Name mx.example.org', 'Syslog no',
    "OnionDir $hs", "OnionKey $dir/sk.key", "OnionTorrc $dir/mail.torrc",
    'OnionPort 25:127.0.0.1:2525', 'OnionPort 465:127.0.0.1:4465',
    'OnionPort 587:127.0.0.1:5587',
    ($tor_user ? "OnionUser $tor_user" : ())));
my $pid = run_daemon([$skm, '-f', '-c', "$dir/sk-milter.conf"], $log);
ok(wait_until(sub { -e $log && slurp($log) =~ /onion service (\S+\.onion)/ }),
    'onion service set up') or diag(-e $log ? slurp($log) : '');
my ($addr) = slurp($log) =~ /onion service (\S+\.onion)/;
like($addr // '', qr/^[a-z2-7]{55}d\.onion$/, 'address logged');
like(slurp($log), qr/smtp;\Q$addr\E:25/, 'Services hint logged');
is(slurp("$hs/hostname"), "$addr\n", 'hostname written');
is(slurp("$dir/mail.torrc"), "HiddenServiceDir $hs\n"
    . "HiddenServicePort 25 127.0.0.1:2525\n"
    . "HiddenServicePort 465 127.0.0.1:4465\n"
    . "HiddenServicePort 587 127.0.0.1:5587\n", 'torrc snippet');
is(stop_daemon($pid), 0, 'clean exit');

# A restart keeps the existing keys (never overwritten).
my $secret = slurp("$hs/hs_ed25519_secret_key");
$pid = run_daemon([$skm, '-f', '-c', "$dir/sk-milter.conf"], $log);
ok(wait_until(sub { (() = slurp($log) =~ /onion service \S+;/g) == 2 }),
    'restart: set up again');
is(slurp("$hs/hs_ed25519_secret_key"), $secret, 'restart: same key');
is(stop_daemon($pid), 0, 'clean exit again');

# A secret key others can read is refused like any private key: logged,
# and no onion service or torrc from it.  The public key and hostname may
# be 0644, as tor writes them.
chmod 0644, "$hs/hs_ed25519_public_key", "$hs/hostname";
chmod 0644, "$hs/hs_ed25519_secret_key";
unlink "$dir/mail.torrc";
$pid = run_daemon([$skm, '-f', '-c', "$dir/sk-milter.conf"], $log);
ok(wait_until(sub { slurp($log) =~ /permissions 0644 are too open/ }),
    'a 0644 secret key: refused') or diag(slurp($log));
like(slurp($log), qr{OnionDir \Q$hs\E: \Q$hs\E/hs_ed25519_secret_key: permissions 0644 are too open},
    '... naming the file and its mode');
is((() = slurp($log) =~ /onion service \S+;/g), 2, '... no onion service');
ok(!-e "$dir/mail.torrc", '... and no torrc');
stop_daemon($pid);
chmod 0600, "$hs/hs_ed25519_secret_key";
spew("$dir/mail.torrc", "HiddenServiceDir $hs\n"
    . "HiddenServicePort 25 127.0.0.1:2525\n"
    . "HiddenServicePort 465 127.0.0.1:4465\n"
    . "HiddenServicePort 587 127.0.0.1:5587\n");

# Real tor.
my $data = "$dir/tor-data";
mkdir $data, 0700;
chown $tor_uid, $tor_gid, $data;
spew("$dir/tor.log", '', 0644);
chown $tor_uid, $tor_gid, "$dir/tor.log";
spew("$dir/torrc", "DisableNetwork 1\nSocksPort 0\nDataDirectory $data\n"
    . "Log notice file $dir/tor.log\n"
    . ($tor_user ? "User $tor_user\n" : '') . "%include $dir/mail.torrc\n");
unlink "$hs/hostname";
my $tpid = run_daemon([$TOR, '-f', "$dir/torrc", '--RunAsDaemon', '0'],
    "$dir/tor.out");
ok(wait_for_file("$hs/hostname", 20), 'tor wrote hostname')
    or diag(slurp("$dir/tor.log") . slurp("$dir/tor.out"));
is(-e "$hs/hostname" ? slurp("$hs/hostname") : '', "$addr\n",
    'tor\'s hostname is the milter\'s address');
stop_daemon($tpid);
done_testing();

#!/usr/bin/perl

# nginx-onion-tor.t -- sovereign_key_onion_dir: nginx's master creates the
# HiddenServiceDir (Tor's formats, 0700, owned by tor's user) and a torrc
# snippet with a HiddenServicePort per listen port; "nginx -t" writes
# nothing; a restart keeps the key; a real tor (DisableNetwork 1) that
# %includes the snippet writes a hostname equal to the Onion-Location
# address nginx sends.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Test::More;

use SKTest;
use NginxTest;

my $skip = nginx_skip();
plan skip_all => $skip if $skip;
my $TOR = has_cmd('tor');
plan skip_all => 'tor is not installed' unless $TOR;

my $t = NginxTest->new;
my $d = $t->dir;
my ($p1, $p2) = ($t->port('http'), $t->port('https'));

my ($tor_user, $tor_uid, $tor_gid) = (undef, $>, $) + 0);
if ($> == 0) {
    my @pw = getpwnam('debian-tor');
    ($tor_user, $tor_uid, $tor_gid) = ('debian-tor', @pw[2, 3]) if @pw;
}
my $user = $tor_user ? " user=$tor_user" : '';

make_ca($d);
my ($ec, $ec_key) = make_cert($d, 'a.test', 'ec');
my $hs = "$d/hs";

$t->write_conf(<<"EOF");
    server {
        listen 127.0.0.1:$p1;
        listen $p2 ssl;
        server_name a.test;
        ssl_certificate $ec; ssl_certificate_key $ec_key;
        sovereign_key_onion_dir $hs$user;
        sovereign_key_onion auto;
        location / { }
    }
EOF

my $r = $t->test_conf;
is($r->{rc}, 0, 'nginx -t passes') or diag($r->{err});
ok(!-e $hs, 'nginx -t created nothing');

$t->start;
sub mode_of { return sprintf '%04o', (stat shift)[2] & 07777 }
is(mode_of($hs), '0700', 'HiddenServiceDir is 0700');
is((stat $hs)[4], $tor_uid, '... owned by tor\'s user');
for my $f (qw(hs_ed25519_secret_key hs_ed25519_public_key hostname)) {
    is(mode_of("$hs/$f"), '0600', "$f is 0600");
    is(join(':', (stat "$hs/$f")[4, 5]), "$tor_uid:$tor_gid", "$f owner");
}
my $addr = slurp("$hs/hostname") =~ s/\n\z//r;
like($addr, qr/^[a-z2-7]{55}d\.onion$/, 'an onion address');
is(slurp("$hs.torrc"), "HiddenServiceDir $hs\n"
    . "HiddenServicePort $p1 127.0.0.1:$p1\n"
    . "HiddenServicePort $p2 127.0.0.1:$p2\n",
    'torrc snippet: a HiddenServicePort per listen port');

$r = run_cmd(['curl', '-sS', '-i', "http://127.0.0.1:$p1/x?y"]);
like($r->{out}, qr{^Onion-Location: http://\Q$addr\E/x\?y\r?$}m,
    'Onion-Location with the new address');

# A restart reads the existing key, never overwrites it.
my $key = slurp("$hs/hs_ed25519_secret_key");
$t->stop;
$t->start;
is(slurp("$hs/hs_ed25519_secret_key"), $key, 'restart: the key is kept');
$r = run_cmd(['curl', '-sS', '-i', "http://127.0.0.1:$p1/"]);
like($r->{out}, qr{^Onion-Location: http://\Q$addr\E/\r?$}m,
    'restart: same address');
$t->stop;
is($t->alerts, '', 'no alerts or sanitizer reports');

# Real tor on what nginx wrote.  Remove the hostname: only a running tor
# writes it again.
my $data = "$d/tor-data";
mkdir $data, 0700 or die "mkdir: $!";
chown $tor_uid, $tor_gid, $data or die "chown: $!";
spew("$d/tor.log", '', 0644);
chown $tor_uid, $tor_gid, "$d/tor.log" or die "chown: $!";
spew("$d/torrc", "DisableNetwork 1\nSocksPort 0\nDataDirectory $data\n"
    . "Log notice file $d/tor.log\n" . ($tor_user ? "User $tor_user\n" : '')
    . "%include $hs.torrc\n");
unlink "$hs/hostname" or die "unlink: $!";
my $tor = run_daemon([$TOR, '-f', "$d/torrc", '--RunAsDaemon', '0'], "$d/tor.out");
ok(wait_for_file("$hs/hostname", 20), 'tor wrote the hostname')
    or diag(slurp("$d/tor.log"));
ok(daemon_alive($tor), 'tor is running');
stop_daemon($tor);
is(-e "$hs/hostname" ? slurp("$hs/hostname") : '', "$addr\n",
    'tor\'s hostname is the Onion-Location address');
unlike(slurp("$d/tor.log"), qr/\[(warn|err)\].*(hidden|onion|HiddenService)/i,
    'tor did not complain about the service');

done_testing();

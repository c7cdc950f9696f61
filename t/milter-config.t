#!/usr/bin/perl
# sk-milter -n: a good configuration passes silently; each broken line
# fails with exit 78 (EX_CONFIG) and "sk-milter: FILE: line N: ...".

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;

my $dir = tmpdir();
my $good = "Socket inet:8891\@127.0.0.1\nName mx.example.org\n";

sub check {
    my ($text, $name) = @_;
    spew("$dir/c.conf", $text);
    return run_cmd([$skm, '-n', '-c', "$dir/c.conf"]);
}

sub bad {
    my ($text, $msg, $name) = @_;
    my $r = check($text);
    is($r->{rc}, 78, "$name: exit 78");
    is($r->{err}, "sk-milter: $msg\n", "$name: message");
}

my $r = check("# comment\n\n$good  Mode   reject  # trailing\n"
    . "syslog no\nUserID root:root\n");
is($r->{rc}, 0, 'good configuration: exit 0');
is($r->{out} . $r->{err}, '', 'good configuration: silent');

bad("$good\nSockett foo\n", "$dir/c.conf: line 4: unrecognized parameter "
    . '"Sockett"', 'unknown key');
bad("$good" . "Syslog maybe\n", "$dir/c.conf: line 3: illegal value "
    . '"maybe" for "Syslog" (yes or no)', 'bad boolean');
bad("Name mx.example.org\n", "$dir/c.conf: required parameter \"Socket\" "
    . 'missing', 'missing Socket');
bad("$good" . "Socket local:/x\n", "$dir/c.conf: line 3: duplicate "
    . 'parameter "Socket" (first set at line 1)', 'duplicate key');
bad("Socket 8891\nName mx.example.org\n", "$dir/c.conf: line 1: illegal "
    . 'value "8891" for "Socket" (inet:PORT@HOST, inet6:PORT@HOST or '
    . 'local:/PATH)', 'bad socket');
bad("$good" . "UserID nosuchuser-sk\n", "$dir/c.conf: line 3: no such "
    . 'user "nosuchuser-sk"', 'unknown user');
bad("$good" . "Mode drop\n", "$dir/c.conf: line 3: illegal value \"drop\" "
    . 'for "Mode" (verify or reject)', 'bad mode');
bad("$good" . "RefreshInterval soon\n", "$dir/c.conf: line 3: illegal "
    . 'value "soon" for "RefreshInterval" (a number 0..100000000)',
    'bad integer');
bad("$good" . "PidFile\n", "$dir/c.conf: line 3: parameter \"PidFile\" "
    . 'needs a value', 'missing value');
# No AuthservID and no Name: the host's name, as OpenDKIM (the packaged
# /etc/sk-milter.conf sets neither).
$r = check("Socket inet:1\@127.0.0.1\n");
is($r->{rc}, 0, 'no authserv-id: the host name, exit 0') or diag($r->{err});
bad("$good" . "Probe ssh 127.0.0.1:22\n", "$dir/c.conf: line 3: illegal "
    . 'value "ssh 127.0.0.1:22" for "Probe" (starttls|tls HOST:PORT)',
    'bad probe');
bad("$good" . "ChainFile /only/one\n", "$dir/c.conf: line 3: illegal "
    . 'value "/only/one" for "ChainFile" (/SOURCE /OUTPUT)', 'bad chain');

spew("$dir/inc.conf", "Mode verify\nBogus 1\n");
bad("$good" . "Include $dir/inc.conf\n", "$dir/inc.conf: line 2: "
    . 'unrecognized parameter "Bogus"', 'error inside an Include');
spew("$dir/loop.conf", "Include $dir/loop.conf\n");
bad("$good" . "Include $dir/loop.conf\n", "$dir/loop.conf: line 1: "
    . 'Include nested more than 5 deep', 'Include loop');

spew("$dir/trust", "example.com smtp\nbad_domain! smtp\n");
$r = check("$good" . "TrustFile $dir/trust\n");
is($r->{rc}, 78, 'bad TrustFile: exit 78');
like($r->{err}, qr{^sk-milter: \Q$dir\E/c\.conf: line 3: TrustFile: \Q$dir\E/trust: line 2: domain: },
    'bad TrustFile: names both lines');
spew("$dir/trust", "example.com smtp sha256:abc\n");
$r = check("$good" . "TrustFile $dir/trust\n");
like($r->{err}, qr/line 1: "sha256:abc" is neither sha256:<64 lowercase hex digits> nor \/PATH of the SK's public key/,
    'bad fingerprint');
spew("$dir/trust", "example.com smtp $dir/nokey.pub\n");
$r = check("$good" . "TrustFile $dir/trust\n");
like($r->{err}, qr{trust: line 1: .*nokey\.pub}, 'unreadable SK key file named');
is($r->{rc}, 78, 'unreadable SK key file: exit 78');

bad("$good" . "PolicySocket 127.0.0.1:9\n", "$dir/c.conf: line 3: illegal "
    . 'value "127.0.0.1:9" for "PolicySocket" (inet:PORT@HOST or '
    . 'local:/PATH)', 'bad PolicySocket');
bad("$good" . "PolicySocket inet:8891\@127.0.0.1\n", "$dir/c.conf: line 3: "
    . 'PolicySocket is the milter\'s Socket', 'PolicySocket = Socket');
$r = check("$good" . "PolicySocket local:$dir/policy.sock\nPolicyTTL 60\n");
is($r->{rc}, 0, 'PolicySocket local: passes') or diag($r->{err});
bad("$good" . "ClientPolicySocket tcp:1\n", "$dir/c.conf: line 3: illegal "
    . 'value "tcp:1" for "ClientPolicySocket" (inet:PORT@HOST or '
    . 'local:/PATH)', 'bad ClientPolicySocket');
bad("$good" . "PolicySocket inet:9\@127.0.0.1\nClientPolicySocket "
    . "inet:9\@127.0.0.1\n", "$dir/c.conf: line 4: ClientPolicySocket is "
    . 'the PolicySocket', 'ClientPolicySocket = PolicySocket');
bad("$good" . "PolicyMapName a:b\n", "$dir/c.conf: line 3: illegal "
    . 'value "a:b" for "PolicyMapName" (letters, digits, "-", "_")',
    'bad PolicyMapName');
bad("$good" . "PolicyMaxConnections 0\n", "$dir/c.conf: line 3: illegal "
    . 'value "0" for "PolicyMaxConnections" (at least 1)',
    'bad PolicyMaxConnections');
spew("$dir/trust", "example.com smpt;;\n");
$r = check("$good" . "TrustFile $dir/trust\n");
like($r->{err}, qr/trust: line 1: services: /, 'bad services');

$r = run_cmd([$skm, '-n', '-c', "$dir/none.conf"]);
is($r->{rc}, 78, 'missing file: exit 78');
like($r->{err}, qr{^sk-milter: \Q$dir\E/none\.conf: cannot open}, 'missing file: message');

bad("$good" . ('x' x 5000) . "\n", "$dir/c.conf: line 3: line too long "
    . '(more than 4096 bytes)', 'long line');
$r = check(join('', map { chr(int(rand(256))) } 1 .. 20000));
is($r->{rc}, 78, 'garbage file: exit 78, no crash');

$r = run_cmd([$skm, '-x']);
is($r->{rc}, 64, 'bad option: exit 64 (EX_USAGE)');

done_testing();

#!/usr/bin/perl
# sk-milter -n: a good configuration passes silently; each broken line
# fails with exit 78 (EX_CONFIG) and "sk-milter: FILE: line N: ...";
# a socket more than the MTA can reach passes with a warning.

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
bad("$good" . "AuthservID mx.example.org/1\n", "$dir/c.conf: line 3: "
    . 'illegal value "mx.example.org/1" for "AuthservID" (a token of at '
    . 'most 255 characters: no space or ()<>@,;:\\"/[]?=)',
    'AuthservID not an RFC 2045 token');
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
bad("$good" . "MaxConnections 0\n", "$dir/c.conf: line 3: illegal "
    . 'value "0" for "MaxConnections" (at least 1)', 'bad MaxConnections');
bad("$good" . "PacketTimeout 3601\n", "$dir/c.conf: line 3: illegal "
    . 'value "3601" for "PacketTimeout" (1 to 3600 seconds)',
    'bad PacketTimeout');
bad("$good" . "PolicyTimeout 0\n", "$dir/c.conf: line 3: illegal "
    . 'value "0" for "PolicyTimeout" (1 to 3600 seconds)',
    'bad PolicyTimeout');
spew("$dir/trust", "example.com smpt;;\n");
$r = check("$good" . "TrustFile $dir/trust\n");
like($r->{err}, qr/trust: line 1: services: /, 'bad services');

$r = run_cmd([$skm, '-n', '-c', "$dir/none.conf"]);
is($r->{rc}, 78, 'missing file: exit 78');
like($r->{err}, qr{^sk-milter: \Q$dir\E/none\.conf: cannot open}, 'missing file: message');

bad("$good" . ('x' x 5000) . "\n", "$dir/c.conf: line 3: line too long "
    . '(more than 4096 bytes)', 'long line');
# Booleans: the whole word, yes|no|true|false|1|0 in any case; anything
# else (a typo, a number, "t") is refused, not read by its first letter.
for my $v (qw(yes no YES No true FALSE True 1 0)) {
    $r = check("$good" . "Syslog $v\n");
    is($r->{rc}, 0, "boolean \"$v\": exit 0") or diag($r->{err});
}
for my $v (qw(nonsense 1234 noo yess t f y n 01 -1)) {
    bad("$good" . "Syslog $v\n", "$dir/c.conf: line 3: illegal value "
        . "\"$v\" for \"Syslog\" (yes or no)", "boolean \"$v\" refused");
}
bad("$good" . "StapleProof Nope\n", "$dir/c.conf: line 3: illegal value "
    . '"Nope" for "StapleProof" (yes or no)', 'StapleProof "Nope" refused');

# A NUL would cut its line short and hide the rest: refused with the line.
bad("$good" . "Syslog no\0 trailing\n", "$dir/c.conf: line 3: a NUL byte",
    'NUL in a value');
bad("# a comment\0\n$good", "$dir/c.conf: line 1: a NUL byte",
    'NUL in a comment');
spew("$dir/inc.conf", "Mode verify\n\0");
bad("$good" . "Include $dir/inc.conf\n", "$dir/inc.conf: line 2: "
    . 'a NUL byte', 'NUL inside an Include');

# TrustFile: a domain listed twice (a lookup takes the first, so the
# second would be ignored) names both lines; a NUL names its line.
spew("$dir/trust", "example.com smtp\nother.example smtp\n"
    . "Example.COM smtp\n");
$r = check("$good" . "TrustFile $dir/trust\n");
is($r->{rc}, 78, 'TrustFile domain twice: exit 78');
like($r->{err}, qr{^sk-milter: \Q$dir\E/c\.conf: line 3: TrustFile: \Q$dir\E/trust: line 3: domain "example\.com" listed twice \(first at line 1\)},
    'TrustFile domain twice: names both lines') or diag($r->{err});
spew("$dir/trust", "other.example smtp\nexample.com smtp\0 sha256:"
    . ('0' x 64) . "\n");
$r = check("$good" . "TrustFile $dir/trust\n");
is($r->{rc}, 78, 'TrustFile NUL: exit 78');
like($r->{err}, qr{TrustFile: \Q$dir\E/trust: line 2: a NUL byte$},
    'TrustFile NUL: names the line') or diag($r->{err});
spew("$dir/trust", "example.com smtp\nother.example smtp\n");
$r = check("$good" . "TrustFile $dir/trust\n");
is($r->{rc}, 0, 'TrustFile of distinct domains: exit 0') or diag($r->{err});

$r = check(join('', map { chr(int(rand(256))) } 1 .. 20000));
is($r->{rc}, 78, 'garbage file: exit 78, no crash');

# Sockets others than the MTA can reach: a warning, exit 0.
sub warns {
    my ($text, $msg, $name) = @_;
    my $r = check($text);
    is($r->{rc}, 0, "$name: exit 0");
    is($r->{err}, "sk-milter: $dir/c.conf: $msg\n", "$name: warning");
}
my $mta = ' and pass or fail the mail they send there';
warns("Socket inet:8891\@0.0.0.0\nName mx.example.org\n", 'line 1: '
    . "warning: Socket inet:8891\@0.0.0.0 listens beyond loopback: other "
    . "hosts can connect to it$mta; bind it to 127.0.0.1 (or use local:) "
    . 'unless a firewall keeps them out', 'milter on every address');
warns("Name mx.example.org\nSocket inet6:8891\@::\n", 'line 2: warning: '
    . "Socket inet6:8891\@:: listens beyond loopback: other hosts can "
    . "connect to it$mta; bind it to 127.0.0.1 (or use local:) unless a "
    . 'firewall keeps them out', 'milter on every IPv6 address');
warns("$good" . "PolicySocket inet:10027\@0.0.0.0\n", 'line 3: warning: '
    . "PolicySocket inet:10027\@0.0.0.0 listens beyond loopback: other "
    . 'hosts can connect to it; bind it to 127.0.0.1 (or use local:) '
    . 'unless a firewall keeps them out', 'policy map on every address');
warns("Socket local:$dir/m.sock\nName mx.example.org\nSocketMode 666\n",
    "line 1: warning: Socket local:$dir/m.sock with SocketMode 0666: any local "
    . 'user can connect to the milter and pass or fail the mail it sends '
    . 'there; make it 0660 and give Postfix the group, or keep it in a '
    . 'directory only Postfix can enter', 'world-writable milter socket');
for my $quiet ("Socket inet:8891\@localhost\n", "Socket inet6:8891\@::1\n",
    "Socket inet:8891\@127.0.0.2\n", "Socket local:$dir/m.sock\n",
    "Socket unix:$dir/m.sock\nSocketMode 0600\n")
{
    $r = check($quiet . "Name mx.example.org\n");
    is($r->{rc} . $r->{err}, '0', "no warning: $quiet");
}
bad("$good" . "SocketMode 0999\n", "$dir/c.conf: line 3: illegal value "
    . '"0999" for "SocketMode" (octal mode bits, 0 to 0777)', 'bad mode');
bad("$good" . "SocketMode 01777\n", "$dir/c.conf: line 3: illegal value "
    . '"01777" for "SocketMode" (octal mode bits, 0 to 0777)', 'mode too big');

# A local milter socket: SocketMode (default 0660), owned by UserID.
my ($nuid, $ngid) = (getpwnam('nobody'))[2, 3];
SKIP: {
    skip('needs root and a user nobody', 4) unless $> == 0 && defined $nuid;
    chmod 0755, $dir;
    spew("$dir/run.conf", "Socket local:$dir/m.sock\nName mx.example.org\n"
        . "Syslog no\nUserID nobody\n");
    spew("$dir/m.sock", "not a socket\n");
    my $pid = run_daemon([$skm, '-f', '-c', "$dir/run.conf"], "$dir/run.log");
    ok(wait_until(sub { !daemon_alive($pid) }), 'a file at the socket path: '
        . 'refused');
    like(slurp("$dir/run.log"), qr/Socket local:\Q$dir\E\/m\.sock: exists and is not a socket/,
        'a file at the socket path: logged');
    unlink "$dir/m.sock";
    $pid = run_daemon([$skm, '-f', '-c', "$dir/run.conf"], "$dir/run.log");
    ok(wait_until(sub { -S "$dir/m.sock" }), 'local socket made');
    my @st = stat "$dir/m.sock";
    is(sprintf('%04o %d %d', $st[2] & 07777, $st[4], $st[5]),
        sprintf('0660 %d %d', $nuid, $ngid),
        'local socket: mode 0660, owned by UserID');
    stop_daemon($pid);
}

$r = run_cmd([$skm, '-x']);
is($r->{rc}, 64, 'bad option: exit 64 (EX_USAGE)');

done_testing();

package SKLiar;

# SKLiar -- a lying mirror (issue 23): a small HTTP proxy in front of a
# real sk-mirror, holding its own mirror key (the client's trust file lists
# it as a trusted mirror with that key).  It passes every request on, and
# answers to GET /query/<name> after telling the lie written in DIR/lie,
# re-signed with its key (a mirror's answers are signed by the mirror, so
# a liar signs what it alters):
#
#   honest        the answer as the mirror gave it (re-signed)
#   drop-newest   each timeline's newest entry of the name left out
#   drop-unbind   each Unbind of the name left out of its history
#   absent        "Entries: 0" everywhere, the real map proofs kept
#   absent-fake   the same, with a made-up map proof of absence
#                 ("Map-Proof: 0 - empty": the whole map is empty)
#   swap          the first two timelines' map proofs swapped
#   replay        DIR/replay (an answer the mirror gave earlier) instead
#
# A query with a nonce is passed on with it; the liar's answer then gets a
# trailer for that nonce signed with its own key too (docs/protocol.md,
# "Nonces"), as a lying mirror would.
#
#   my $l = SKLiar::start(DIR, UPSTREAM_URL)   DIR/liar.key, DIR/liar.pub
#   $l->{url}, $l->{pub}; SKLiar::lie($l, 'absent'); stop_daemon($l->{pid})
#   SKLiar::parse(BODY) / SKLiar::build(A, KEY): an answer in pieces, and
#   back, signed by KEY.

use strict;
use warnings;

use IO::Socket::INET;
use SKTest;
use SKTimeline ();
use SKMirror ();

sub start {
    my ($dir, $upstream) = @_;
    mkdir $dir;
    SKTimeline::ed25519_key($dir, 'liar');
    spew("$dir/lie", "honest\n");
    my $port = free_port();
    my $pid = run_daemon(['perl', "-I$SKTest::ROOT/t/lib", '-MSKLiar', '-e',
        'SKLiar::serve(@ARGV)', $dir, $upstream, $port], "$dir.log");
    wait_for_port($port, 10) or die "SKLiar: no listener: " . slurp("$dir.log");
    return { dir => $dir, pid => $pid, port => $port,
        url => "http://127.0.0.1:$port", pub => "$dir/liar.pub",
        key => "$dir/liar.key" };
}

sub lie {
    my ($l, $lie) = @_;
    spew("$l->{dir}/lie", "$lie\n");
}

# The answer in pieces: head (through "Timelines: k\n"), and per timeline
# block: head (Timeline, Checkpoint and note, Checkpoint-Age), last
# (Last-Entry, the entry, its Proof lines), mproof (Map-Proof and its hash
# lines), entries (each Entry piece, raw).
sub parse {
    my ($body) = @_;
    my ($s) = $body =~ /\A(.*\n)Signature: [A-Za-z0-9_-]{86}\n\z/s
        or die "SKLiar: no mirror signature line\n";
    my $take = sub {
        my ($re) = @_;
        $s =~ s/\A($re\n)// or die "SKLiar: want $re at "
            . substr($s, 0, 40) . "\n";
        return $1;
    };
    my $bytes = sub { return substr($s, 0, $_[0], '') };
    my $proof = sub {
        my $h = $take->('Proof: \d+');
        my ($p) = $h =~ /(\d+)/;
        return $h . join('', map { $take->('[A-Za-z0-9+\/]{43}=') } 1 .. $p);
    };
    my $a = { head => '', blocks => [] };
    $a->{head} .= $take->($_) for 'SK-Mirror-Answer: 1', 'Name: \S+',
        'Since: \d+', 'Timestamp: \d+', 'Reneged-Hash: [0-9a-f]{8}';
    my $th = $take->('Timelines: \d+');
    $a->{head} .= $th;
    my ($k) = $th =~ /(\d+)/;
    for (1 .. $k) {
        my $b = { head => $take->('Timeline: \d+ \w+'), last => '',
            mproof => '', entries => [] };
        ($b->{tid}) = $b->{head} =~ /(\d+)/;
        my $ch = $take->('Checkpoint: \d+');
        my ($n) = $ch =~ /(\d+)/;
        $b->{head} .= $ch . $bytes->($n);
        $b->{head} .= $take->('Checkpoint-Age: \d+')
            if $s =~ /\ACheckpoint-Age: /;
        if ($s =~ /\ALast-Entry: (\d+)\n/) {
            $b->{last} = $take->('Last-Entry: \d+') . $bytes->($1)
                . $proof->();
        }
        if ($s =~ /\AMap-Proof: \d+ (\S+) /) {
            my $bits = $1 eq '-' ? 0
                : unpack('%32b*', pack('H*', $1));
            $b->{mproof} = $take->('Map-Proof: [^\n]+')
                . join('', map { $take->('[A-Za-z0-9+\/]{43}=') } 1 .. $bits);
        }
        my ($m) = $take->('Entries: \d+') =~ /(\d+)/;
        for (1 .. $m) {
            my $eh = $take->('Entry: \d+ \d+');
            my ($len) = $eh =~ / (\d+)$/;
            push @{$b->{entries}}, $eh . $bytes->($len) . $proof->();
        }
        push @{$a->{blocks}}, $b;
    }
    die "SKLiar: bytes after the last block\n" if length $s;
    return $a;
}

sub build {
    my ($a, $key) = @_;
    my $s = $a->{head};
    for my $b (@{$a->{blocks}}) {
        $s .= $b->{head} . $b->{last} . $b->{mproof}
            . 'Entries: ' . scalar(@{$b->{entries}}) . "\n"
            . join('', @{$b->{entries}});
    }
    return $s . 'Signature: '
        . SKTimeline::b64url(SKMirror::ed_sign($key, $s)) . "\n";
}

# The lie told to answer a.
sub tell_lie {
    my ($a, $lie) = @_;
    my @b = @{$a->{blocks}};
    if ($lie eq 'drop-newest') {
        pop @{$_->{entries}} for @b;
    } elsif ($lie eq 'drop-unbind') {
        $_->{entries} = [grep { !/^Unbind: /m } @{$_->{entries}}] for @b;
    } elsif ($lie eq 'absent' || $lie eq 'absent-fake') {
        $_->{entries} = [] for @b;
        if ($lie eq 'absent-fake') {
            $_->{mproof} = "Map-Proof: 0 - empty\n" for grep { $_->{mproof} }
                @b;
        }
    } elsif ($lie eq 'swap') {
        my @m = grep { $_->{mproof} } @b;
        ($m[0]{mproof}, $m[1]{mproof}) = ($m[1]{mproof}, $m[0]{mproof})
            if @m >= 2;
    } elsif ($lie ne 'honest') {
        die "SKLiar: no such lie: $lie\n";
    }
    return $a;
}

sub get {
    my ($upstream, $path) = @_;
    my ($host, $port) = $upstream =~ m{^http://([^:/]+):(\d+)};
    my $c = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port,
        Timeout => 10) or return (502, "upstream: $!\n");
    print $c "GET $path HTTP/1.0\r\nHost: $host\r\n\r\n";
    local $/;
    my $r = <$c> // '';
    close $c;
    my ($code, $body) = $r =~ /\AHTTP\/1\.\d (\d+)[^\n]*\n.*?\r?\n\r?\n(.*)\z/s
        or return (502, "upstream: no HTTP answer\n");
    return ($code, $body);
}

# The proxy (run in its own process).
sub serve {
    my ($dir, $upstream, $port) = @_;
    my $srv = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
        LocalPort => $port, Listen => 64, ReuseAddr => 1)
        or die "listen: $!";
    while (my $c = $srv->accept) {
        my $req = '';
        while (my $l = <$c>) {
            $req .= $l;
            last if $l =~ /^\r?\n$/;
        }
        my ($path) = $req =~ /^GET (\S+) HTTP/;
        my ($code, $body) = (404, "no such resource\n");
        if (defined $path) {
            chomp(my $lie = slurp("$dir/lie"));
            ($code, $body) = get($upstream, $path);
            if ($code == 200 && $path =~ m{^/query/}) {
                $body = slurp("$dir/replay") if $lie eq 'replay';
                $body = eval { build(tell_lie(parse(
                    SKMirror::strip_trailer($body)),
                    $lie eq 'replay' ? 'honest' : $lie),
                    "$dir/liar.key") } // do { $code = 500; "$@" };
                $body .= SKMirror::nonce_trailer("$dir/liar.key", $body, $1)
                    if $code == 200 && $path =~ /\?nonce=([A-Za-z0-9_-]{43})$/;
            }
            print STDERR "GET $path: $lie: $code\n";
        }
        print $c "HTTP/1.1 $code X\r\nConnection: close\r\n"
            . "Content-Length: " . length($body) . "\r\n\r\n$body";
        close $c;
    }
}

1;
